package rmqcheck;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Orders sent through a MessageQueueSelector (orderId % queues) and consumed
 * with MessageListenerOrderly, which locks its queues (LOCK_BATCH_MQ): per
 * order the steps arrive in send order.
 */
final class OrderlyScenario {
    private OrderlyScenario() {}

    static final int ORDERS = 6;
    static final int STEPS = 8;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        DefaultMQProducer p = env.producer("p");
        MessageQueueSelector byOrder = (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size());
        Map<Integer, Integer> queueOfOrder = new HashMap<>();
        List<String> keys = new ArrayList<>();
        // Interleaved: step 0 of every order, then step 1, ...
        for (int step = 0; step < STEPS; step++) {
            for (int order = 0; order < ORDERS; order++) {
                String key = "order" + order + "-step" + step;
                Message m = Env.message(topic, "T", key);
                m.putUserProperty("orderId", Integer.toString(order));
                m.putUserProperty("step", Integer.toString(step));
                SendResult r = p.send(m, byOrder, order);
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    throw env.fail("ordered send", "expected SEND_OK for " + key + ", saw " + r);
                }
                Integer before = queueOfOrder.put(order, r.getMessageQueue().getQueueId());
                if (before != null && before != r.getMessageQueue().getQueueId()) {
                    throw env.fail("ordered send", "order " + order + " went to queues " + before + " and "
                        + r.getMessageQueue().getQueueId());
                }
                keys.add(key);
            }
        }
        env.pass("ordered send", keys.size() + " SEND_OK, queue per order " + queueOfOrder);

        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                rec.add(m, "c");
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        env.start(c);
        env.expectExactly("orderly consume all", rec, keys, Env.CONSUME_TIMEOUT_MS);

        Map<Integer, List<Integer>> stepsByOrder = new TreeMap<>();
        for (Received.Msg m : rec.snapshot()) {
            int order = Integer.parseInt(m.ext().getUserProperty("orderId"));
            stepsByOrder.computeIfAbsent(order, o -> new ArrayList<>())
                .add(Integer.parseInt(m.ext().getUserProperty("step")));
            if (m.queueId() != queueOfOrder.get(order)) {
                throw env.fail("order stays in its queue", "order " + order + " sent to queue "
                    + queueOfOrder.get(order) + ", step read from queue " + m.queueId());
            }
        }
        List<Integer> want = new ArrayList<>();
        for (int s = 0; s < STEPS; s++) {
            want.add(s);
        }
        for (Map.Entry<Integer, List<Integer>> e : stepsByOrder.entrySet()) {
            if (!e.getValue().equals(want)) {
                throw env.fail("per-order sequence", "order " + e.getKey() + ": expected steps " + want
                    + ", saw " + e.getValue());
            }
        }
        env.pass("per-order sequence", ORDERS + " orders, steps 0.." + (STEPS - 1) + " in send order");
    }
}
