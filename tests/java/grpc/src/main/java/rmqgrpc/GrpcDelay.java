package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Delay by delivery timestamp: a SimpleConsumer of {@code --group} on the
 * DELAY topic {@code --topic} is started, then one message per delay of
 * {@code --delays-ms} (comma separated) is sent with {@code
 * setDeliveryTimestamp(now + delay)}. Message i has tag {@code delay}, keys
 * {@code delay-key-i} and body {@code delay-body-<delay>}. Each is printed
 * once sent, {@code SENT <tab> msgId <tab> tag <tab> keys <tab> body}, and
 * once received and acked, {@code RECV <tab> msgId <tab> tag <tab> keys <tab>
 * body <tab> sentMs <tab> dueMs <tab> receivedMs <tab> deliveryTimestamp}
 * (the last as the consumer sees it, -1 when absent). A message received
 * twice fails the run; the timing bounds are checked by the caller.
 */
final class GrpcDelay {
    private GrpcDelay() {}

    /** Invisible time of a received message (acked at once). */
    static final Duration INVISIBLE = Duration.ofSeconds(15);

    static void run(Map<String, String> args) throws Exception {
        String topic = GrpcSuite.required(args, "topic");
        List<Long> delays = new ArrayList<>();
        for (String d : GrpcSuite.required(args, "delays-ms").split(",")) {
            delays.add(Long.parseLong(d.trim()));
        }
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Map<String, long[]> times = new HashMap<>();
        try (SimpleConsumer consumer = GrpcConsumers.simple(args);
             Producer producer = provider.newProducerBuilder()
                 .setClientConfiguration(GrpcConsumers.config(args))
                 .setTopics(topic)
                 .build()) {
            for (int i = 0; i < delays.size(); i++) {
                String keys = "delay-key-" + i;
                String body = "delay-body-" + delays.get(i);
                long sent = System.currentTimeMillis();
                long due = sent + delays.get(i);
                String id = producer.send(provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag("delay")
                    .setKeys(keys)
                    .setBody(body.getBytes(StandardCharsets.UTF_8))
                    .setDeliveryTimestamp(due)
                    .build()).getMessageId().toString();
                times.put(id, new long[] {sent, due});
                GrpcSuite.line("SENT", id, "delay", keys, body);
            }
            int received = 0;
            while (received < delays.size()) {
                for (MessageView m : consumer.receive(16, INVISIBLE)) {
                    long now = System.currentTimeMillis();
                    String id = m.getMessageId().toString();
                    long[] t = times.remove(id);
                    if (t == null) {
                        throw new GrpcSuite.CheckFailed("received twice or never sent: " + id);
                    }
                    received++;
                    System.out.println("RECV\t" + id + "\t" + m.getTag().orElse("") + "\t"
                        + String.join(" ", m.getKeys()) + "\t" + GrpcConsumers.body(m) + "\t"
                        + t[0] + "\t" + t[1] + "\t" + now + "\t"
                        + m.getDeliveryTimestamp().orElse(-1L));
                    System.out.flush();
                    consumer.ack(m);
                }
            }
            List<MessageView> extra = consumer.receive(16, INVISIBLE);
            if (!extra.isEmpty()) {
                throw new GrpcSuite.CheckFailed(extra.size() + " messages past the "
                    + delays.size() + " sent, first " + extra.get(0).getMessageId());
            }
        }
    }
}
