package rmqcheck;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Request-reply ({@code DefaultMQProducer.request}): a push consumer answers
 * every request with {@code MessageUtil.createReplyMessage} sent by its own
 * producer (SEND_REPLY_MESSAGE_V2 to the cluster's reply topic); the broker
 * pushes the reply to the requester (PUSH_REPLY_MESSAGE_TO_CLIENT). Checks a
 * synchronous and an asynchronous request get the reply to their own
 * request, with its body.
 */
final class RequestReplyScenario {
    private RequestReplyScenario() {}

    /** How long one request waits for its reply. */
    static final long REQUEST_TIMEOUT_MS = 15_000;

    static String replyBody(MessageExt request) {
        return "reply to " + new String(request.getBody(), StandardCharsets.UTF_8);
    }

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        DefaultMQProducer replier = env.producer("r");
        AtomicReference<String> replyError = new AtomicReference<>();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                try {
                    Message reply = MessageUtil.createReplyMessage(m, replyBody(m).getBytes(StandardCharsets.UTF_8));
                    replier.send(reply, Env.SEND_TIMEOUT_MS);
                } catch (Exception e) {
                    replyError.compareAndSet(null, String.valueOf(e));
                    System.out.println("{\"reply\":\"failed\",\"error\":" + Env.json(String.valueOf(e)) + "}");
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        env.start(c);

        DefaultMQProducer requester = env.producer("p");
        Message sync = Env.message(topic, "T", "req-sync");
        Message answer = requester.request(sync, REQUEST_TIMEOUT_MS);
        env.expectEq("sync request gets its reply",
            "reply to " + Env.bodyOf("req-sync"),
            answer == null ? null : new String(answer.getBody(), StandardCharsets.UTF_8));

        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<String> asyncBody = new AtomicReference<>();
        AtomicReference<String> asyncError = new AtomicReference<>();
        requester.request(Env.message(topic, "T", "req-async"), new RequestCallback() {
            @Override
            public void onSuccess(Message message) {
                asyncBody.set(new String(message.getBody(), StandardCharsets.UTF_8));
                done.countDown();
            }

            @Override
            public void onException(Throwable e) {
                asyncError.set(String.valueOf(e));
                done.countDown();
            }
        }, REQUEST_TIMEOUT_MS);
        boolean came = done.await(REQUEST_TIMEOUT_MS + 5_000, TimeUnit.MILLISECONDS);
        env.expectEq("async request gets its reply",
            "reply to " + Env.bodyOf("req-async"),
            came ? (asyncBody.get() != null ? asyncBody.get() : "error " + asyncError.get()) : "nothing");
        env.expectTrue("every reply was sent", replyError.get() == null, "reply errors: " + replyError.get());
    }
}
