package rmqgrpc;

import java.util.Collections;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;

/**
 * The gRPC PushConsumer of {@code --group} on {@code --topic}: prints each
 * message it is given and returns once it has {@code --count} distinct ones;
 * a message given twice fails the run.
 */
final class GrpcPush {
    private GrpcPush() {}

    static void run(Map<String, String> args) throws Exception {
        String topic = GrpcSuite.required(args, "topic");
        int count = Integer.parseInt(GrpcSuite.required(args, "count"));
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "60000"));
        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        AtomicReference<String> twice = new AtomicReference<>();
        CountDownLatch all = new CountDownLatch(count);
        try (PushConsumer consumer = ClientServiceProvider.loadService().newPushConsumerBuilder()
            .setClientConfiguration(GrpcConsumers.config(args))
            .setConsumerGroup(GrpcSuite.required(args, "group"))
            .setSubscriptionExpressions(Collections.singletonMap(topic, GrpcConsumers.filter(args)))
            .setMessageListener(m -> {
                if (seen.putIfAbsent(m.getMessageId().toString(), Boolean.TRUE) == null) {
                    GrpcConsumers.print(m);
                    all.countDown();
                } else {
                    twice.compareAndSet(null, m.getMessageId().toString());
                }
                return ConsumeResult.SUCCESS;
            })
            .build()) {
            if (!all.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                throw new GrpcSuite.CheckFailed("received " + seen.size() + " of " + count);
            }
            if (twice.get() != null) {
                throw new GrpcSuite.CheckFailed("given twice: " + twice.get());
            }
        }
    }
}
