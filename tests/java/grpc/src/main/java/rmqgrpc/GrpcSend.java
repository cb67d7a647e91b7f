package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Sends {@code --count} messages with the gRPC producer through the proxy at
 * {@code --endpoint}: {@code --mode sync} one after the other, {@code async}
 * all at once and then waits for every receipt. Message i has tag {@code
 * --tag}, keys {@code <mode>-key-i} and body {@code <mode>-body-i}; with
 * {@code --message-groups K} (FIFO topics) it is in message group {@code
 * group-(i mod K)}; with {@code --props true} it has the user properties
 * {@code index=i} and {@code color=red} (even i) or {@code blue} (odd i).
 */
final class GrpcSend {
    private GrpcSend() {}

    /** Longest one send may take, retries included. */
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

    static void run(Map<String, String> args) throws Exception {
        String endpoint = GrpcSuite.required(args, "endpoint");
        String topic = GrpcSuite.required(args, "topic");
        int count = Integer.parseInt(args.getOrDefault("count", "1"));
        String tag = args.getOrDefault("tag", "TagA");
        String mode = args.getOrDefault("mode", "sync");
        int groups = Integer.parseInt(args.getOrDefault("message-groups", "0"));
        boolean props = Boolean.parseBoolean(args.getOrDefault("props", "false"));
        if (!mode.equals("sync") && !mode.equals("async")) {
            throw new GrpcSuite.CheckFailed("--mode is sync or async, not " + mode);
        }
        long start = System.nanoTime();
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration config = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(REQUEST_TIMEOUT)
            .build();
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(config)
            .setTopics(topic)
            .build()) {
            List<Message> messages = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                MessageBuilder builder = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag(tag)
                    .setKeys(mode + "-key-" + i)
                    .setBody((mode + "-body-" + i).getBytes(StandardCharsets.UTF_8));
                if (groups > 0) {
                    builder.setMessageGroup("group-" + (i % groups));
                }
                if (props) {
                    builder.addProperty("index", Integer.toString(i))
                        .addProperty("color", i % 2 == 0 ? "red" : "blue");
                }
                messages.add(builder.build());
            }
            GrpcSuite.tagged("NOTE", "producer started after " + (System.nanoTime() - start) / 1_000_000 + " ms");
            List<SendReceipt> receipts = new ArrayList<>();
            if (mode.equals("sync")) {
                for (Message m : messages) {
                    receipts.add(producer.send(m));
                    GrpcSuite.tagged("NOTE", "receipt " + receipts.size() + " after "
                        + (System.nanoTime() - start) / 1_000_000 + " ms");
                }
            } else {
                List<CompletableFuture<SendReceipt>> futures = new ArrayList<>();
                for (Message m : messages) {
                    futures.add(producer.sendAsync(m));
                }
                for (CompletableFuture<SendReceipt> f : futures) {
                    receipts.add(f.get(REQUEST_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS));
                }
                GrpcSuite.tagged("NOTE", "all receipts after " + (System.nanoTime() - start) / 1_000_000 + " ms");
            }
            for (int i = 0; i < count; i++) {
                Message m = messages.get(i);
                GrpcSuite.line("SENT", receipts.get(i).getMessageId().toString(), tag,
                    String.join(" ", m.getKeys()), mode + "-body-" + i);
            }
            GrpcSuite.tagged("NOTE", "closing the producer after " + (System.nanoTime() - start) / 1_000_000 + " ms");
        }
        GrpcSuite.tagged("NOTE", "closed after " + (System.nanoTime() - start) / 1_000_000 + " ms");
    }
}
