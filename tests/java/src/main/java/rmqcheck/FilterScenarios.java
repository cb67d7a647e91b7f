package rmqcheck;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/** Server-side filtering: tags and SQL92 property expressions. */
final class FilterScenarios {
    private FilterScenarios() {}

    static final String[] TAGS = {"TagA", "TagB", "TagC", "TagD"};

    /** A consumer of {@code TagA || TagC} gets exactly those messages. */
    static void tags(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        DefaultMQProducer p = env.producer("p");
        List<String> wanted = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            String tag = TAGS[i % TAGS.length];
            String key = "tag-" + i + "-" + tag;
            send(env, p, Env.message(topic, tag, key));
            if (tag.equals("TagA") || tag.equals("TagC")) {
                wanted.add(key);
            }
        }
        env.pass("send", "24 SEND_OK over tags TagA..TagD");
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "TagA || TagC");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        env.expectExactly("TagA || TagC", rec, wanted, Env.CONSUME_TIMEOUT_MS);
    }

    /**
     * {@code a > 5 AND b = 'x'} over user properties a in 0..10 and b in x/y.
     * The client does not evaluate SQL92 itself: the broker must filter (it
     * needs {@code enablePropertyFilter=true}).
     */
    static void sql92(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        DefaultMQProducer p = env.producer("p");
        List<String> wanted = new ArrayList<>();
        int count = 0;
        for (int a = 0; a <= 10; a++) {
            for (String b : new String[] {"x", "y"}) {
                String key = "sql-a" + a + "-b" + b;
                Message m = Env.message(topic, "T", key);
                m.putUserProperty("a", Integer.toString(a));
                m.putUserProperty("b", b);
                send(env, p, m);
                count++;
                if (a > 5 && b.equals("x")) {
                    wanted.add(key);
                }
            }
        }
        env.pass("send", count + " SEND_OK with properties a=0..10, b=x|y");
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, MessageSelector.bySql("a > 5 AND b = 'x'"));
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        env.pass("sql92 consumer started", "broker accepted the SQL92 subscription (CHECK_CLIENT_CONFIG)");
        env.expectExactly("a > 5 AND b = 'x'", rec, wanted, Env.CONSUME_TIMEOUT_MS);
    }

    static void send(Env env, DefaultMQProducer p, Message m) throws Exception {
        SendResult r = p.send(m);
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw env.fail("send", "expected SEND_OK for " + m.getKeys() + ", saw " + r);
        }
    }
}
