import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

/** Loaded again and again by Churn, each time a new class: enough work that the JIT compiles it. */
public class Payload implements IntUnaryOperator {
    private int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    @Override
    public int applyAsInt(int seed) {
        int x = fib(16 + (seed & 3));
        List<String> words = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            words.add(Integer.toHexString(i * seed + x));
        }
        long h = 0;
        for (int round = 0; round < 40; round++) {
            for (String w : words) {
                h = h * 31 + w.hashCode();
            }
        }
        try {
            if ((seed & 1) == 0) {
                throw new IllegalArgumentException(words.get(seed % words.size()));
            }
        } catch (IllegalArgumentException e) {
            h += e.getMessage().length();
        }
        IntUnaryOperator square = v -> v * v;
        return (int) h + square.applyAsInt(x);
    }
}
