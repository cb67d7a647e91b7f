package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * A FIFO message (one with a message group) to a topic of another type.
 *
 * <p>{@code --normal-topic} is NORMAL from the start: the client itself
 * refuses the send, since the route and the settings the broker gave it say
 * the topic accepts NORMAL messages only and that types are validated; the
 * refusal is printed as {@code LOCAL <tab> exception}.
 *
 * <p>{@code --topic} is FIFO when the producer starts and reads its route: a
 * FIFO message is sent (a SENT line); then the scenario creates the file
 * {@code --ready-file} and waits for {@code --go-file}, meanwhile the caller
 * makes the topic NORMAL on the broker. The client still holds the FIFO
 * route, so the next FIFO message reaches the broker, which must refuse it:
 * {@code REFUSED <tab> exception message}.
 */
final class GrpcTyped {
    private GrpcTyped() {}

    static void run(Map<String, String> args) throws Exception {
        String normal = GrpcSuite.required(args, "normal-topic");
        String topic = GrpcSuite.required(args, "topic");
        Path ready = Path.of(GrpcSuite.required(args, "ready-file"));
        Path go = Path.of(GrpcSuite.required(args, "go-file"));
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(GrpcConsumers.config(args))
            .setTopics(normal, topic)
            .build()) {
            try {
                SendReceipt r = producer.send(fifo(provider, normal, 0));
                throw new GrpcSuite.CheckFailed("FIFO message to NORMAL " + normal + " sent: "
                    + r.getMessageId());
            } catch (IllegalArgumentException | org.apache.rocketmq.client.apis.ClientException e) {
                GrpcSuite.tagged("LOCAL", e.toString());
            }
            Message first = fifo(provider, topic, 1);
            SendReceipt receipt = producer.send(first);
            GrpcSuite.line("SENT", receipt.getMessageId().toString(), first.getTag().orElse(""),
                String.join(" ", first.getKeys()), "typed-body-1");
            GrpcSuite.handshake(ready, go);
            try {
                SendReceipt r = producer.send(fifo(provider, topic, 2));
                throw new GrpcSuite.CheckFailed("FIFO message to " + topic
                    + " sent after it became NORMAL: " + r.getMessageId());
            } catch (org.apache.rocketmq.client.apis.ClientException e) {
                GrpcSuite.tagged("REFUSED", e.getMessage());
            }
        }
    }

    static Message fifo(ClientServiceProvider provider, String topic, int i) {
        return provider.newMessageBuilder()
            .setTopic(topic)
            .setTag("TagA")
            .setKeys("typed-key-" + i)
            .setMessageGroup("typed-group")
            .setBody(("typed-body-" + i).getBytes(StandardCharsets.UTF_8))
            .build();
    }
}
