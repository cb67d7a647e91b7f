package rmqcheck;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The stock client with {@link AclClientRPCHook} against a broker with
 * aclEnable: the admin account creates the topics, the user account sends
 * and consumes; a wrong secret, an unknown key, a DENY topic and a
 * non-admin topic create are each refused with NO_PERMISSION (16), and
 * so is a wrong secret from outside an account's white address, while one
 * from inside it is taken (as RocketMQ's whiteRemoteAddress does).
 *
 * <p>Arguments: {@code --admin-key/--admin-secret} and
 * {@code --user-key/--user-secret}, {@code --outside-key} (an account
 * white-listed elsewhere) and {@code --inside-key} (one white-listed on
 * 127.0.0.1); topic {@code Allowed} (the user may
 * PUB|SUB) and {@code Denied} (DENY).
 */
final class AclScenario {
    private AclScenario() {}

    static final int MESSAGES = 10;

    static RPCHook hook(String ak, String sk) {
        return new AclClientRPCHook(new SessionCredentials(ak, sk));
    }

    static void run(Env env) throws Exception {
        RPCHook admin = hook(env.arg("admin-key", ""), env.arg("admin-secret", ""));
        RPCHook user = hook(env.arg("user-key", ""), env.arg("user-secret", ""));
        DefaultMQAdminExt adminExt = new DefaultMQAdminExt(admin);
        adminExt.setNamesrvAddr(env.namesrv);
        adminExt.setInstanceName(env.name("aclAdmin"));
        adminExt.start();
        env.onClose(adminExt::shutdown);
        for (String t : new String[] {"Allowed", "Denied"}) {
            adminExt.createAndUpdateTopicConfig(env.brokerAddr,
                new TopicConfig(t, 2, 2, PermName.PERM_READ | PermName.PERM_WRITE));
            env.waitRoute(t, 2);
        }

        DefaultMQProducer p = new DefaultMQProducer(env.name("p"), user);
        env.configure(p, "p");
        p.start();
        env.onClose(p::shutdown);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            String key = "acl-" + i;
            SendResult r = p.send(Env.message("Allowed", "T", key));
            env.expectEq("signed send " + key, SendStatus.SEND_OK, r.getSendStatus());
            keys.add(key);
        }

        refused(env, "wrong secret", hook(env.arg("user-key", ""), "wrong-secret"), "Allowed");
        refused(env, "unknown key", hook("NoSuchKey1", env.arg("user-secret", "")), "Allowed");
        refused(env, "DENY topic", user, "Denied");
        // An account's whiteRemoteAddress lets requests from there in without
        // a signature check (it does not restrict the account to it): from
        // 127.0.0.1 a wrong secret is refused for an account white-listed
        // elsewhere, and taken for one white-listed here.
        refused(env, "wrong secret outside its white address",
            hook(env.arg("outside-key", ""), "wrong-secret"), "Allowed");
        DefaultMQProducer inside = new DefaultMQProducer(env.name("p-inside"),
            hook(env.arg("inside-key", ""), "wrong-secret"));
        env.configure(inside, "p-inside");
        inside.start();
        env.onClose(inside::shutdown);
        SendResult in = inside.send(Env.message("Allowed", "T", "acl-inside"));
        env.expectEq("wrong secret inside its white address", SendStatus.SEND_OK,
            in.getSendStatus());
        keys.add("acl-inside");

        DefaultMQAdminExt userAdmin = new DefaultMQAdminExt(user);
        userAdmin.setNamesrvAddr(env.namesrv);
        userAdmin.setInstanceName(env.name("userAdmin"));
        userAdmin.start();
        env.onClose(userAdmin::shutdown);
        try {
            userAdmin.createAndUpdateTopicConfig(env.brokerAddr,
                new TopicConfig("ByUser", 1, 1, PermName.PERM_READ | PermName.PERM_WRITE));
            throw env.fail("non-admin topic create", "was accepted");
        } catch (MQBrokerException | MQClientException e) {
            env.expectEq("non-admin topic create refused", 16, codeOf(e));
        }

        Received rec = new Received();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(env.name("g"), user,
            new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
        env.configure(c, "c");
        c.setConsumeFromWhere(org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe("Allowed", "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        env.expectExactly("signed consumer reads all", rec, keys, Env.CONSUME_TIMEOUT_MS);
    }

    /** The response code an exception of the client carries. */
    static int codeOf(Exception e) {
        if (e instanceof MQBrokerException b) {
            return b.getResponseCode();
        }
        return ((MQClientException) e).getResponseCode();
    }

    /** A producer signing with {@code hook} cannot send to {@code topic}: NO_PERMISSION. */
    static void refused(Env env, String what, RPCHook hook, String topic) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(env.name("p-" + what.replace(' ', '-')), hook);
        env.configure(p, "p-" + what.replace(' ', '-'));
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        try {
            SendResult r = p.send(Env.message(topic, "T", "refused-" + what));
            throw env.fail(what, "was accepted: " + r);
        } catch (MQBrokerException | MQClientException e) {
            env.expectEq(what + " refused", 16, codeOf(e));
        } finally {
            p.shutdown();
        }
    }
}
