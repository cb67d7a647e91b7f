package rmqcheck;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * TransactionMQProducer: COMMIT_MESSAGE is consumed, ROLLBACK_MESSAGE never
 * is, UNKNOW is consumed once the broker's check-back
 * (CHECK_TRANSACTION_STATE) gets COMMIT_MESSAGE from checkLocalTransaction.
 * The broker needs a short transactionCheckInterval and transactionTimeOut
 * (about 1 s each) for this to finish in seconds.
 */
final class TransactionScenario {
    private TransactionScenario() {}

    /** Longest wait for the committed and the checked-then-committed messages. */
    static final long TX_TIMEOUT_MS = 30_000;
    /** After both came, how long the rolled-back one gets to (wrongly) show. */
    static final long ROLLBACK_WATCH_MS = 3_000;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        Map<String, Integer> checks = new TreeMap<>();
        TransactionMQProducer p = new TransactionMQProducer(env.name("p"));
        env.configure(p, "p");
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return switch (msg.getKeys()) {
                    case "tx-commit" -> LocalTransactionState.COMMIT_MESSAGE;
                    case "tx-rollback" -> LocalTransactionState.ROLLBACK_MESSAGE;
                    default -> LocalTransactionState.UNKNOW;
                };
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                synchronized (checks) {
                    checks.merge(msg.getKeys(), 1, Integer::sum);
                }
                return "tx-unknown".equals(msg.getKeys())
                    ? LocalTransactionState.COMMIT_MESSAGE
                    : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        p.start();
        env.onClose(p::shutdown);

        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);

        Map<String, LocalTransactionState> expected = new TreeMap<>(Map.of(
            "tx-commit", LocalTransactionState.COMMIT_MESSAGE,
            "tx-rollback", LocalTransactionState.ROLLBACK_MESSAGE,
            "tx-unknown", LocalTransactionState.UNKNOW));
        for (Map.Entry<String, LocalTransactionState> e : expected.entrySet()) {
            TransactionSendResult r = p.sendMessageInTransaction(Env.message(topic, "T", e.getKey()), null);
            if (r.getSendStatus() != SendStatus.SEND_OK || r.getLocalTransactionState() != e.getValue()) {
                throw env.fail("half send", "expected SEND_OK and " + e.getValue() + " for " + e.getKey()
                    + ", saw " + r.getSendStatus() + " and " + r.getLocalTransactionState());
            }
        }
        env.pass("half sends", "3 SEND_OK; local states " + expected);

        boolean both = rec.awaitCount(2, TX_TIMEOUT_MS);
        Thread.sleep(ROLLBACK_WATCH_MS);
        env.checkExactly("committed and checked-then-committed consumed, rolled back not", rec.snapshot(),
            List.of("tx-commit", "tx-unknown"), both ? "" : " (timed out after " + TX_TIMEOUT_MS + " ms)");
        Map<String, Integer> seen;
        synchronized (checks) {
            seen = new TreeMap<>(checks);
        }
        env.expectTrue("check-back asked only about the unknown one",
            seen.getOrDefault("tx-unknown", 0) >= 1 && seen.keySet().equals(java.util.Set.of("tx-unknown")),
            "checkLocalTransaction calls per key " + seen);
    }
}
