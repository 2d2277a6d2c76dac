import java.util.function.IntUnaryOperator;

// Makes lambdas of two interfaces (one of them twice) and a method reference; `call` makes one
// call of each invoke kind.
public class Makes {
    static final Runnable R = () -> {};
    static final Runnable S = () -> {};
    static final IntUnaryOperator TWICE = Makes::twice;

    static int twice(int x) { return 2 * x; }

    int call(Runnable r, Object o) {
        r.run();
        String s = String.valueOf(o);
        return s.length() + new Makes().hashCode();
    }
}
