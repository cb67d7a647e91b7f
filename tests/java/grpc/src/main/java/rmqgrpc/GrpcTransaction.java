package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Transactions with check-back on the TRANSACTION topic {@code --topic}: a
 * TransactionProducer sends, each in its own transaction, {@code --commit}
 * messages it commits at once, {@code --rollback} it rolls back at once, and
 * {@code --check-commit} and {@code --check-rollback} it leaves unknown, so
 * that the broker's check-back, through the proxy, asks its
 * TransactionChecker, which commits the first kind and rolls back the
 * second. Message i of kind k has tag k, keys {@code tx-key-k-i} and body
 * {@code tx-body-k-i}; each is printed once sent (SENT line) and each check
 * as {@code CHECK <tab> msgId <tab> tag <tab> keys <tab> body <tab>
 * resolution <tab> topic}. Once every unknown one was checked, a
 * SimpleConsumer of {@code --group} receives and acks (RECV lines) until it
 * has as many as were committed, then one more receive must find nothing.
 * What was received is compared by the caller.
 */
final class GrpcTransaction {
    private GrpcTransaction() {}

    static final String COMMIT = "commit";
    static final String ROLLBACK = "rollback";
    static final String CHECK_COMMIT = "checkCommit";
    static final String CHECK_ROLLBACK = "checkRollback";
    static final Duration INVISIBLE = Duration.ofSeconds(15);

    static void run(Map<String, String> args) throws Exception {
        String topic = GrpcSuite.required(args, "topic");
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "60000"));
        int commits = count(args, COMMIT);
        int rollbacks = count(args, ROLLBACK);
        int checkCommits = count(args, "check-commit");
        int checkRollbacks = count(args, "check-rollback");
        // Ids of the halves left unknown, until their first check.
        Set<String> unchecked = ConcurrentHashMap.newKeySet();
        CountDownLatch allChecked = new CountDownLatch(checkCommits + checkRollbacks);
        TransactionChecker checker = m -> {
            String tag = m.getTag().orElse("");
            TransactionResolution r = tag.equals(CHECK_COMMIT) ? TransactionResolution.COMMIT
                : tag.equals(CHECK_ROLLBACK) ? TransactionResolution.ROLLBACK
                : TransactionResolution.UNKNOWN;
            String id = m.getMessageId().toString();
            System.out.println("CHECK\t" + id + "\t" + tag + "\t" + String.join(" ", m.getKeys())
                + "\t" + GrpcConsumers.body(m) + "\t" + r + "\t" + m.getTopic());
            System.out.flush();
            if (unchecked.remove(id)) {
                allChecked.countDown();
            }
            return r;
        };
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(GrpcConsumers.config(args))
            .setTopics(topic)
            .setTransactionChecker(checker)
            .build()) {
            String[] kinds = {COMMIT, ROLLBACK, CHECK_COMMIT, CHECK_ROLLBACK};
            int[] counts = {commits, rollbacks, checkCommits, checkRollbacks};
            for (int k = 0; k < kinds.length; k++) {
                for (int i = 0; i < counts[k]; i++) {
                    String kind = kinds[k];
                    String keys = "tx-key-" + kind + "-" + i;
                    String body = "tx-body-" + kind + "-" + i;
                    Transaction tx = producer.beginTransaction();
                    String id = producer.send(provider.newMessageBuilder()
                        .setTopic(topic)
                        .setTag(kind)
                        .setKeys(keys)
                        .setBody(body.getBytes(StandardCharsets.UTF_8))
                        .build(), tx).getMessageId().toString();
                    GrpcSuite.line("SENT", id, kind, keys, body);
                    if (kind.equals(COMMIT)) {
                        tx.commit();
                    } else if (kind.equals(ROLLBACK)) {
                        tx.rollback();
                    } else {
                        unchecked.add(id);
                    }
                }
            }
            if (!allChecked.await(timeoutMs, TimeUnit.MILLISECONDS)) {
                throw new GrpcSuite.CheckFailed("never checked: " + unchecked);
            }
            int want = commits + checkCommits;
            Set<String> seen = new HashSet<>();
            try (SimpleConsumer consumer = GrpcConsumers.simple(args)) {
                while (seen.size() < want) {
                    for (MessageView m : consumer.receive(16, INVISIBLE)) {
                        if (!seen.add(m.getMessageId().toString())) {
                            throw new GrpcSuite.CheckFailed("received twice: " + m.getMessageId());
                        }
                        GrpcConsumers.print(m);
                        consumer.ack(m);
                    }
                }
                List<MessageView> extra = consumer.receive(16, INVISIBLE);
                for (MessageView m : extra) {
                    GrpcConsumers.print(m);
                }
                if (!extra.isEmpty()) {
                    throw new GrpcSuite.CheckFailed(extra.size() + " messages past the "
                        + want + " committed, first " + extra.get(0).getMessageId());
                }
            }
        }
    }

    private static int count(Map<String, String> args, String key) {
        return Integer.parseInt(args.getOrDefault(key, "0"));
    }
}
