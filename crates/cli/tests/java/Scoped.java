/**
 * Allocates the same class through the same method inside and outside the roots
 * (`Scoped::root`, `Scoped::recurse`, `Scoped::thrower`), on 2 threads at once: with roots,
 * the alloc mode counts the in-root allocations only (the alloc scope tests).
 */
public class Scoped {
    static final class Item { int v; }
    static final class Other { int v; }

    static volatile Object sink;

    /** The allocating method, called inside and outside the roots. */
    static Object make() { return new Item(); }

    /** A root: 1000 Items. */
    static void root(int n) {
        for (int i = 0; i < n; i++) sink = make();
    }

    /** Not in any root's extent: nothing it allocates counts. */
    static void outside(int n) {
        for (int i = 0; i < n; i++) {
            sink = make();
            sink = new Other();
        }
    }

    /** A recursive root: 2 Items per level, counted at every depth. */
    static void recurse(int depth) {
        sink = make();
        if (depth > 0) recurse(depth - 1);
        sink = make();
    }

    /** A root left by an exception: 1 Item and its exception. */
    static void thrower() {
        sink = make();
        throw new IllegalStateException("out of the root");
    }

    static void work(boolean rootFirst) {
        if (rootFirst) {
            root(1000);
            outside(700);
        } else {
            outside(700);
            root(1000);
        }
        recurse(9);
        outside(100);
        for (int i = 0; i < 5; i++) {
            try {
                thrower();
            } catch (IllegalStateException e) {
                outside(300);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        // Outside every root first, before anything is revealed.
        outside(50);
        Thread a = new Thread(() -> work(true));
        Thread b = new Thread(() -> work(false));
        a.start();
        b.start();
        a.join();
        b.join();
        outside(50);
        System.out.println("done");
    }
}
