package rmqbench;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * Where the LMQ load's messages go, and what each one holds: message i
 * (0 &lt;= i &lt; messages) names the LMQs (i*K + k) mod L for k &lt; K in its
 * INNER_MULTI_DISPATCH, each called {@code %LMQ%<prefix>-<index>}, and its
 * body is "m&lt;i&gt;" padded with dots to the body size. With
 * messages * K == L (the default shape) every LMQ receives exactly one message.
 */
final class LmqPlan {
    /** The property naming a message's LMQs (MessageConst.PROPERTY_INNER_MULTI_DISPATCH). */
    static final String DISPATCH_KEY = "INNER_MULTI_DISPATCH";
    /** The property the broker writes: the message's offset in each LMQ, same order. */
    static final String OFFSETS_KEY = "INNER_MULTI_QUEUE_OFFSET";
    /** RocketMQ's LMQ name prefix (MixAll.LMQ_PREFIX). */
    static final String LMQ_PREFIX = "%LMQ%";
    private static final byte PAD = '.';

    final int messages;
    final int fanOut;
    final long lmqs;
    final String prefix;
    final int size;

    LmqPlan(int messages, int fanOut, long lmqs, String prefix, int size) {
        if (fanOut > lmqs) {
            // A message would name one LMQ twice, which brokers treat differently.
            throw new IllegalArgumentException("--fan-out " + fanOut + " is more than --lmqs " + lmqs);
        }
        int longest = ("m" + (messages - 1)).length();
        if (size < longest) {
            throw new IllegalArgumentException("--size " + size + " cannot hold \"m" + (messages - 1) + "\"");
        }
        if (!prefix.matches("[a-zA-Z0-9_-]+")) {
            throw new IllegalArgumentException("--prefix " + prefix + ": only letters, digits, '_' and '-'");
        }
        this.messages = messages;
        this.fanOut = fanOut;
        this.lmqs = lmqs;
        this.prefix = prefix;
        this.size = size;
    }

    /** The name of LMQ {@code j}. */
    String lmqName(long j) {
        return LMQ_PREFIX + prefix + "-" + j;
    }

    /** The LMQ that message {@code i} names at position {@code k}. */
    long lmqOf(int i, int k) {
        return ((long) i * fanOut + k) % lmqs;
    }

    /** Message {@code i}'s INNER_MULTI_DISPATCH value. */
    String dispatch(int i) {
        StringBuilder b = new StringBuilder(fanOut * 24);
        for (int k = 0; k < fanOut; k++) {
            if (k > 0) {
                b.append(',');
            }
            b.append(lmqName(lmqOf(i, k)));
        }
        return b.toString();
    }

    /** Message {@code i}'s body. */
    byte[] body(int i) {
        byte[] b = new byte[size];
        Arrays.fill(b, PAD);
        byte[] id = ("m" + i).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(id, 0, b, 0, id.length);
        return b;
    }

    /** The message a body belongs to, or -1 when it is not exactly one of this plan's bodies. */
    int messageOf(byte[] body) {
        if (body == null || body.length != size || body[0] != 'm') {
            return -1;
        }
        int end = 1;
        while (end < size && body[end] != PAD) {
            end++;
        }
        int i;
        try {
            i = Integer.parseInt(new String(body, 1, end - 1, StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            return -1;
        }
        return i >= 0 && i < messages && Arrays.equals(body, body(i)) ? i : -1;
    }

    /** A short printable form of a body, for a mismatch report. */
    static String show(byte[] body) {
        if (body == null) {
            return "no body";
        }
        String s = new String(body, 0, Math.min(body.length, 24), StandardCharsets.US_ASCII);
        return "\"" + s.replaceAll("[^ -~]", "?") + (body.length > 24 ? "..." : "") + "\" (" + body.length + " B)";
    }

    /** {@code count} distinct LMQ indexes, the same for the same seed. */
    long[] sample(int count, long seed) {
        if (count > lmqs) {
            throw new IllegalArgumentException("--sample " + count + " is more than --lmqs " + lmqs);
        }
        Random r = new Random(seed);
        Set<Long> picked = new LinkedHashSet<>();
        while (picked.size() < count) {
            picked.add(Math.floorMod(r.nextLong(), lmqs));
        }
        return picked.stream().mapToLong(Long::longValue).toArray();
    }

    /** For each of {@code lmqIndexes}, the messages that name it, ascending. */
    Map<Long, int[]> members(long[] lmqIndexes) {
        Map<Long, int[]> counts = new HashMap<>();
        Map<Long, Integer> fill = new HashMap<>();
        for (long j : lmqIndexes) {
            fill.put(j, 0);
        }
        // Two passes over every (message, position): count, then place.
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < messages; i++) {
                for (int k = 0; k < fanOut; k++) {
                    long j = lmqOf(i, k);
                    Integer n = fill.get(j);
                    if (n == null) {
                        continue;
                    }
                    if (pass == 1) {
                        counts.get(j)[n] = i;
                    }
                    fill.put(j, n + 1);
                }
            }
            if (pass == 0) {
                for (Map.Entry<Long, Integer> e : fill.entrySet()) {
                    counts.put(e.getKey(), new int[e.getValue()]);
                    e.setValue(0);
                }
            }
        }
        return counts;
    }
}
