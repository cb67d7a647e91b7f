package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A 4.9.8 push consumer (group {@code --group}, every tag, from the first
 * offset) on the broker {@code --namesrv} names: prints each distinct message
 * of {@code --topic} once and returns when it has {@code --count} of them.
 * Whether there are more is for the caller to check on the broker.
 */
final class RemotingConsume {
    private RemotingConsume() {}

    static void run(Map<String, String> args) throws Exception {
        String namesrv = GrpcSuite.required(args, "namesrv");
        String topic = GrpcSuite.required(args, "topic");
        String group = GrpcSuite.required(args, "group");
        int count = Integer.parseInt(GrpcSuite.required(args, "count"));
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "60000"));
        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        CountDownLatch all = new CountDownLatch(count);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (seen.putIfAbsent(m.getMsgId(), Boolean.TRUE) == null) {
                    GrpcSuite.line("RECV", m.getMsgId(), m.getTags(), m.getKeys(),
                        new String(m.getBody(), StandardCharsets.UTF_8));
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            if (!all.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                throw new GrpcSuite.CheckFailed(
                    "received " + seen.size() + " of " + count + " messages");
            }
        } finally {
            consumer.shutdown();
        }
    }
}
