package suite;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** The checksum every workload prints as its last line: "checksum WORKLOAD HEX". */
public final class Sum {
    private final MessageDigest digest;
    private long items;

    public Sum() {
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public Sum add(byte[] bytes) {
        digest.update(bytes);
        items++;
        return this;
    }

    public Sum add(String s) {
        return add(s.getBytes(StandardCharsets.UTF_8));
    }

    public Sum add(long v) {
        return add(Long.toString(v));
    }

    public void print(String workload) {
        StringBuilder hex = new StringBuilder();
        for (byte b : digest.digest()) {
            hex.append(String.format("%02x", b & 0xff));
        }
        System.out.println("items " + items);
        System.out.println("checksum " + workload + " " + hex.substring(0, 32));
    }

    /** The scale argument (args[0]), or the default. */
    public static int scale(String[] args, int dflt) {
        return args.length > 0 ? Integer.parseInt(args[0]) : dflt;
    }

    /** A deterministic pseudo-random sequence (64-bit LCG), the same on every JVM. */
    public static final class Rng {
        private long state;

        public Rng(long seed) {
            state = seed;
        }

        public int next(int bound) {
            state = state * 6364136223846793005L + 1442695040888963407L;
            return (int) ((state >>> 33) % bound);
        }
    }

    private static final String[] WORDS = {
        "profile", "thread", "method", "class", "stack", "heap", "frame", "probe", "call", "tree",
        "lambda", "vector", "matrix", "queue", "index", "query", "table", "token", "parser", "lexer",
        "buffer", "socket", "stream", "record", "schema", "cursor", "commit", "branch", "merge", "delta",
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
        "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"
    };

    /** n words drawn from a fixed vocabulary with a skewed (Zipf-like) distribution. */
    public static String words(Rng rng, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            int a = rng.next(WORDS.length);
            int b = rng.next(WORDS.length);
            if (i > 0) {
                sb.append(' ');
            }
            sb.append(WORDS[Math.min(a, b)]);
        }
        return sb.toString();
    }
}
