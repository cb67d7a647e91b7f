package rmqgrpc;

import java.util.Collections;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;

/**
 * The gRPC PushConsumer of {@code --group} on {@code --topic}: prints each
 * message it is given and returns once it has {@code --count} distinct ones;
 * a message given twice fails the run. With {@code --hold-ms} the listener
 * holds each message that long before it succeeds (a slow consumer: longer
 * than the message's invisible time, the broker must renew it), and with
 * {@code --linger-ms} the consumer stays that much longer after the last
 * one, so a message given again late is seen too.
 */
final class GrpcPush {
    private GrpcPush() {}

    static void run(Map<String, String> args) throws Exception {
        String topic = GrpcSuite.required(args, "topic");
        int count = Integer.parseInt(GrpcSuite.required(args, "count"));
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "60000"));
        long holdMs = Long.parseLong(args.getOrDefault("hold-ms", "0"));
        long lingerMs = Long.parseLong(args.getOrDefault("linger-ms", "0"));
        Map<String, AtomicInteger> given = new ConcurrentHashMap<>();
        CountDownLatch all = new CountDownLatch(count);
        try (PushConsumer consumer = ClientServiceProvider.loadService().newPushConsumerBuilder()
            .setClientConfiguration(GrpcConsumers.config(args))
            .setConsumerGroup(GrpcSuite.required(args, "group"))
            .setSubscriptionExpressions(Collections.singletonMap(topic, GrpcConsumers.filter(args)))
            .setMessageListener(m -> {
                String id = m.getMessageId().toString();
                boolean first = given.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() == 1;
                if (holdMs > 0) {
                    try {
                        Thread.sleep(holdMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return ConsumeResult.FAILURE;
                    }
                }
                if (first) {
                    GrpcConsumers.print(m);
                    all.countDown();
                }
                return ConsumeResult.SUCCESS;
            })
            .build()) {
            if (!all.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                throw new GrpcSuite.CheckFailed("received " + given.size() + " of " + count);
            }
            Thread.sleep(lingerMs);
            for (Map.Entry<String, AtomicInteger> e : given.entrySet()) {
                if (e.getValue().get() > 1) {
                    throw new GrpcSuite.CheckFailed("given " + e.getValue().get() + " times: " + e.getKey());
                }
            }
        }
    }
}
