package rmqgrpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * FIFO receive of a FIFO group: {@code --count} messages sent by {@code send
 * --message-groups}, body {@code <mode>-body-i}. Each message group must
 * arrive in send order (ascending i), each message on its first delivery, and
 * no message may be handed out while an earlier one of its group is unacked:
 * every round receives {@code --batch} (default 2), receives again with those
 * still unacked, then acks everything. One receive may hand out several
 * messages of a group, in order.
 */
final class GrpcFifo {
    private GrpcFifo() {}

    static void run(Map<String, String> args) throws Exception {
        int count = Integer.parseInt(GrpcSuite.required(args, "count"));
        int batch = Integer.parseInt(args.getOrDefault("batch", "2"));
        Duration invisible = GrpcConsumers.millis(args, "invisible-ms", 30_000);
        Map<String, Integer> lastOfGroup = new HashMap<>();
        Set<String> seen = new HashSet<>();
        try (SimpleConsumer consumer = GrpcConsumers.simple(args)) {
            while (seen.size() < count) {
                List<MessageView> unacked = new ArrayList<>();
                Set<String> busy = new HashSet<>();
                for (int pass = 0; pass < 2; pass++) {
                    Set<String> before = new HashSet<>(busy);
                    for (MessageView m : consumer.receive(batch, invisible)) {
                        check(m, seen, lastOfGroup, before);
                        busy.add(m.getMessageGroup().orElse(""));
                        unacked.add(m);
                    }
                }
                for (MessageView m : unacked) {
                    consumer.ack(m);
                }
            }
        }
    }

    static void check(MessageView m, Set<String> seen, Map<String, Integer> lastOfGroup,
        Set<String> busy) throws GrpcSuite.CheckFailed {
        GrpcConsumers.print(m);
        String id = m.getMessageId().toString();
        String group = m.getMessageGroup().orElseThrow(
            () -> new GrpcSuite.CheckFailed(id + " has no message group"));
        if (!seen.add(id)) {
            throw new GrpcSuite.CheckFailed("received twice: " + id);
        }
        if (m.getDeliveryAttempt() != 1) {
            throw new GrpcSuite.CheckFailed(id + " delivery attempt " + m.getDeliveryAttempt());
        }
        if (busy.contains(group)) {
            throw new GrpcSuite.CheckFailed(id + " of " + group
                + " handed out while an earlier one of its group is unacked");
        }
        String body = GrpcConsumers.body(m);
        int index = Integer.parseInt(body.substring(body.lastIndexOf('-') + 1));
        Integer last = lastOfGroup.put(group, index);
        if (last != null && last >= index) {
            throw new GrpcSuite.CheckFailed(group + ": " + body + " after index " + last);
        }
    }
}
