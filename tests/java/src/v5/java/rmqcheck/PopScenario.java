package rmqcheck;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.AckStatus;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;

/**
 * RocketMQ 5.x POP through the stock 5.3.3 remoting client's own calls
 * (MQClientAPIImpl popMessageAsync / ackMessageAsync /
 * changeInvisibleTimeAsync), checked by content: every message handed out
 * once; unacked ones come back after their invisible time with
 * reconsumeTimes 1 under their own topic; acked ones never; a changed
 * invisible time; a tag filter; orderly POP holding a queue until its
 * messages are acked.
 */
final class PopScenario {
    private PopScenario() {}

    static final int N = 40;
    static final long RPC_MS = 10_000;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), 4);
        DefaultMQProducer p = env.producer("p");
        List<String> all = new ArrayList<>();
        List<String> tagA = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            String tag = i % 2 == 0 ? "TagA" : "TagB";
            String key = "pop-" + i;
            SendResult r = p.send(Env.message(topic, tag, key));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("send", key + ": " + r);
            }
            all.add(key);
            if (tag.equals("TagA")) {
                tagA.add(key);
            }
        }
        env.pass("send", N + " SEND_OK");

        ClientConfig cc = new ClientConfig();
        env.configure(cc, "pop");
        MQClientInstance inst = MQClientManager.getInstance().getOrCreateMQClientInstance(cc);
        inst.start();
        env.onClose(inst::shutdown);
        MQClientAPIImpl api = inst.getMQClientAPIImpl();

        // Every message once, invisible for 3 s.
        String g = env.name("g");
        List<MessageExt> first = popUntil(env, api, topic, g, "*", N, 3_000, false, -1);
        env.checkExactly("pop everything once", received(first), all, "");
        List<String> odd = new ArrayList<>();
        int acked = 0;
        for (MessageExt m : first) {
            int i = Integer.parseInt(m.getKeys().substring(4));
            if (i % 2 == 0) {
                ack(env, api, topic, g, m);
                acked++;
            } else {
                odd.add(m.getKeys());
            }
        }
        env.pass("ack", acked + " acked, " + odd.size() + " left unacked");

        // The unacked half comes back once its invisible time is over.
        List<MessageExt> back = popUntil(env, api, topic, g, "*", odd.size(), 60_000, false, -1);
        env.checkExactly("unacked come back", received(back), odd, "");
        for (MessageExt m : back) {
            env.expectEq("reconsumeTimes of " + m.getKeys(), 1, m.getReconsumeTimes());
            env.expectEq("topic of " + m.getKeys(), topic, m.getTopic());
            ack(env, api, topic, g, m);
        }
        // Acked messages do not come back, retried ones acked included.
        Thread.sleep(4_500);
        PopResult none = pop(api, env, topic, g, "*", 32, 60_000, false, -1, 1_000);
        env.expectEq("nothing after all acked", 0, found(none).size());

        // A changed invisible time: 60 s becomes 1 s.
        String g2 = env.name("g2");
        List<MessageExt> one = popUntil(env, api, topic, g2, "*", 1, 60_000, false, -1, 1);
        MessageExt m1 = one.get(0);
        changeInvisible(env, api, topic, g2, m1, 1_000);
        List<MessageExt> again = popUntil(env, api, topic, g2, "*", 1, 60_000, false, -1, 1, m1.getKeys());
        env.expectEq("changed invisible time: same message back", m1.getKeys(), again.get(0).getKeys());
        env.expectEq("changed invisible time: reconsumeTimes", 1, again.get(0).getReconsumeTimes());

        // A tag filter.
        String g3 = env.name("g3");
        List<MessageExt> a = popUntil(env, api, topic, g3, "TagA", tagA.size(), 60_000, false, -1);
        env.checkExactly("tag filter TagA", received(a), tagA, "");

        // Orderly: a queue's next messages wait until the popped ones are acked.
        String ft = env.createTopic(env.name("fifo"), 1);
        for (int i = 0; i < 4; i++) {
            SendResult r = p.send(Env.message(ft, "F", "fifo-" + i), new MessageQueue(ft, env.brokerName, 0));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("send fifo", String.valueOf(r));
            }
        }
        String g4 = env.name("g4");
        List<MessageExt> o1 = found(pop(api, env, ft, g4, "*", 2, 60_000, true, 0, 0));
        env.expectEq("orderly first pop", List.of("fifo-0", "fifo-1"), keys(o1));
        List<MessageExt> blocked = found(pop(api, env, ft, g4, "*", 2, 60_000, true, 0, 0));
        env.expectEq("orderly queue held while unacked", List.of(), keys(blocked));
        for (MessageExt m : o1) {
            ack(env, api, ft, g4, m);
        }
        List<MessageExt> o2 = found(pop(api, env, ft, g4, "*", 2, 2_000, true, 0, 0));
        env.expectEq("orderly after ack", List.of("fifo-2", "fifo-3"), keys(o2));
        Thread.sleep(2_500);
        List<MessageExt> o3 = found(pop(api, env, ft, g4, "*", 2, 60_000, true, 0, 0));
        env.expectEq("orderly redelivery after invisible time", List.of("fifo-2", "fifo-3"), keys(o3));
        env.expectEq("orderly redelivery reconsumeTimes", 1, o3.get(0).getReconsumeTimes());
    }

    static List<Received.Msg> received(List<MessageExt> ms) {
        Received r = new Received();
        for (MessageExt m : ms) {
            r.add(m, "pop");
        }
        return r.snapshot();
    }

    static List<String> keys(List<MessageExt> ms) {
        List<String> out = new ArrayList<>();
        for (MessageExt m : ms) {
            out.add(m.getKeys());
        }
        return out;
    }

    static List<MessageExt> found(PopResult r) {
        return r.getPopStatus() == PopStatus.FOUND && r.getMsgFoundList() != null ? r.getMsgFoundList() : List.of();
    }

    static List<MessageExt> popUntil(Env env, MQClientAPIImpl api, String topic, String group, String exp, int n,
                                     long invisibleMs, boolean order, int queueId) throws Exception {
        return popUntil(env, api, topic, group, exp, n, invisibleMs, order, queueId, 32, null);
    }

    static List<MessageExt> popUntil(Env env, MQClientAPIImpl api, String topic, String group, String exp, int n,
                                     long invisibleMs, boolean order, int queueId, int max) throws Exception {
        return popUntil(env, api, topic, group, exp, n, invisibleMs, order, queueId, max, null);
    }

    /** Pops (long polling 2 s) until {@code n} messages came, for at most 20 s. */
    static List<MessageExt> popUntil(Env env, MQClientAPIImpl api, String topic, String group, String exp, int n,
                                     long invisibleMs, boolean order, int queueId, int max, String wantKey)
        throws Exception {
        List<MessageExt> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + Env.CONSUME_TIMEOUT_MS;
        while (got.size() < n && System.currentTimeMillis() < deadline) {
            PopResult r = pop(api, env, topic, group, exp, Math.min(max, n - got.size()), invisibleMs, order,
                queueId, 2_000);
            for (MessageExt m : found(r)) {
                if (wantKey == null || wantKey.equals(m.getKeys())) {
                    got.add(m);
                }
            }
        }
        if (got.size() < n) {
            throw env.fail("pop " + topic + " as " + group, "got " + got.size() + " of " + n + ": " + keys(got));
        }
        return got;
    }

    static PopResult pop(MQClientAPIImpl api, Env env, String topic, String group, String exp, int max,
                         long invisibleMs, boolean order, int queueId, long pollMs) throws Exception {
        PopMessageRequestHeader h = new PopMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(queueId);
        h.setMaxMsgNums(max);
        h.setInvisibleTime(invisibleMs);
        h.setPollTime(pollMs);
        h.setBornTime(System.currentTimeMillis());
        h.setInitMode(0);
        h.setExpType("TAG");
        h.setExp(exp);
        h.setOrder(order);
        CompletableFuture<PopResult> f = new CompletableFuture<>();
        api.popMessageAsync(env.brokerName, env.brokerAddr, h, pollMs + RPC_MS, new PopCallback() {
            @Override
            public void onSuccess(PopResult popResult) {
                f.complete(popResult);
            }

            @Override
            public void onException(Throwable e) {
                f.completeExceptionally(e);
            }
        });
        return f.get(pollMs + RPC_MS + 5_000, TimeUnit.MILLISECONDS);
    }

    static void ack(Env env, MQClientAPIImpl api, String topic, String group, MessageExt m) throws Exception {
        String extra = m.getProperty(MessageConst.PROPERTY_POP_CK);
        String[] parts = ExtraInfoUtil.split(extra);
        AckMessageRequestHeader h = new AckMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(ExtraInfoUtil.getRealTopic(parts, topic, group));
        h.setQueueId(ExtraInfoUtil.getQueueId(parts));
        h.setExtraInfo(extra);
        h.setOffset(ExtraInfoUtil.getQueueOffset(parts));
        CompletableFuture<AckResult> f = new CompletableFuture<>();
        api.ackMessageAsync(env.brokerAddr, RPC_MS, completing(f), h);
        AckResult r = f.get(RPC_MS + 5_000, TimeUnit.MILLISECONDS);
        if (r.getStatus() != AckStatus.OK) {
            throw env.fail("ack " + m.getKeys(), String.valueOf(r));
        }
    }

    /** An ack callback that completes {@code f}. */
    static AckCallback completing(CompletableFuture<AckResult> f) {
        return new AckCallback() {
            @Override
            public void onSuccess(AckResult r) {
                f.complete(r);
            }

            @Override
            public void onException(Throwable e) {
                f.completeExceptionally(e);
            }
        };
    }

    static void changeInvisible(Env env, MQClientAPIImpl api, String topic, String group, MessageExt m, long ms)
        throws Exception {
        String extra = m.getProperty(MessageConst.PROPERTY_POP_CK);
        String[] parts = ExtraInfoUtil.split(extra);
        ChangeInvisibleTimeRequestHeader h = new ChangeInvisibleTimeRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(ExtraInfoUtil.getRealTopic(parts, topic, group));
        h.setQueueId(ExtraInfoUtil.getQueueId(parts));
        h.setExtraInfo(extra);
        h.setOffset(ExtraInfoUtil.getQueueOffset(parts));
        h.setInvisibleTime(ms);
        CompletableFuture<AckResult> f = new CompletableFuture<>();
        api.changeInvisibleTimeAsync(env.brokerName, env.brokerAddr, h, RPC_MS, completing(f));
        AckResult r = f.get(RPC_MS + 5_000, TimeUnit.MILLISECONDS);
        if (r.getStatus() != AckStatus.OK) {
            throw env.fail("change invisible time of " + m.getKeys(), String.valueOf(r));
        }
        env.pass("change invisible time", m.getKeys() + " -> " + ms + " ms: " + r.getExtraInfo());
    }

}
