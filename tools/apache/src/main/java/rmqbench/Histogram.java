package rmqbench;

/**
 * Latency histogram in microseconds, log-linear buckets: exact below 128 us,
 * then 64 buckets per power of two (at most 1.6 % wide). One per thread, merged
 * at the end; not thread-safe.
 */
final class Histogram {
    private static final int SUB_BITS = 6;
    private static final int SUB = 1 << SUB_BITS;
    private static final int LINEAR = 2 * SUB;
    /** Powers of two above the linear range, up to 2^47 us (4 years). */
    private static final int OCTAVES = 40;

    private final long[] counts = new long[LINEAR + OCTAVES * SUB];
    private long total;

    void record(long us) {
        if (us < 0) {
            us = 0;
        }
        counts[index(us)]++;
        total++;
    }

    void merge(Histogram other) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] += other.counts[i];
        }
        total += other.total;
    }

    long count() {
        return total;
    }

    /** The smallest bucket's upper bound below which a fraction q of values lie (0 if empty). */
    long percentile(double q) {
        if (total == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(q * total));
        long seen = 0;
        for (int i = 0; i < counts.length; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return upperBound(i);
            }
        }
        return upperBound(counts.length - 1);
    }

    private static int index(long us) {
        if (us < LINEAR) {
            return (int) us;
        }
        int exp = 63 - Long.numberOfLeadingZeros(us);
        int octave = exp - SUB_BITS - 1;
        if (octave >= OCTAVES) {
            return LINEAR + OCTAVES * SUB - 1;
        }
        int sub = (int) ((us >>> (exp - SUB_BITS)) & (SUB - 1));
        return LINEAR + octave * SUB + sub;
    }

    private static long upperBound(int index) {
        if (index < LINEAR) {
            return index;
        }
        int octave = (index - LINEAR) / SUB;
        int sub = (index - LINEAR) % SUB;
        int shift = octave + 1;
        return (((long) (SUB + sub) + 1) << shift) - 1;
    }
}
