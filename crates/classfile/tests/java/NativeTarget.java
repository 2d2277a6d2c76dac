/**
 * Natives of every kind for the `native` probe's wrappers: bound by name and by RegisterNatives
 * (and bound again after the wrappers exist), static and instance, synchronized, throwing,
 * calling back into Java, taking and returning wide and reference values. Prints one line that
 * must not change when the natives are wrapped.
 *
 * <p>Usage: java NativeTarget LIBRARY
 */
public class NativeTarget {
    static native long add(int a, long b);

    /** Bound with RegisterNatives in JNI_OnLoad, and again by {@link #rebind}. */
    static native double scale(double x, float f);

    /** Binds {@link #scale} to a second function (which doubles the product). */
    static native void rebind();

    static native String echo(String s);

    /** Throws IllegalStateException(msg) from native code. */
    static native void fail(String msg);

    /** Calls {@link #twice} n times through JNI and returns the sum. */
    static native int callBack(int n);

    /** Bound with RegisterNatives: returns ++count if this thread holds this object's monitor. */
    synchronized native int bump();

    int count;

    static int twice(int x) {
        return 2 * x;
    }

    public static void main(String[] args) {
        System.load(args[0]);
        long sum = 0;
        double scaled = 0;
        int failures = 0;
        NativeTarget t = new NativeTarget();
        for (int i = 0; i < 1000; i++) {
            sum += add(i, 1L << 40);
            scaled += scale(i, 0.5f);
            sum += echo("n" + (i % 10)).length();
            sum += callBack(3);
            sum += t.bump();
        }
        rebind();
        for (int i = 0; i < 100; i++) {
            scaled += scale(i, 0.5f);
        }
        for (int i = 0; i < 10; i++) {
            try {
                fail("f" + i);
            } catch (IllegalStateException e) {
                if (e.getMessage().equals("f" + i)) {
                    failures++;
                }
            }
        }
        System.out.println(sum + " " + scaled + " " + failures + " " + t.count);
    }
}
