// Method shapes for `is_trivial`: the first group is trivial, the second is not (comments say why).
public class Trivial {
    static int counter;
    int x;
    long[] arr = new long[4];
    Object o;

    int getX() { return x; }
    void setX(int v) { x = v; }
    void empty() {}
    static int bump() { return ++counter; }
    int pick(boolean b) { return b ? x : -x; }
    long at(int i) { return arr[i]; }
    String name() { return "t"; }
    boolean isString() { return o instanceof String; }
    int len() { return arr.length; }
    static int max() { return Integer.MAX_VALUE; }

    int loop(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; } // backward branch
    int call() { return getX() + 1; } // a call
    Object alloc() { return new Object(); } // new
    int[] array(int n) { return new int[n]; } // allocation of any size
    synchronized int locked() { return x; } // may block
    int monitor() { synchronized (this) { return x; } } // may block
    static java.io.PrintStream out() { return System.out; } // may initialise another class
    Class<?> cls() { return String.class; } // may load a class
    void fail() { throw new IllegalStateException(); } // allocates, throws
    int big(int a) { return a * 1 + a * 2 + a * 3 + a * 4 + a * 5 + a * 6 + a * 7 + a * 8 + a * 9 + a * 10; } // 50 bytes
    static Runnable lambda() { return () -> {}; } // invokedynamic
}
