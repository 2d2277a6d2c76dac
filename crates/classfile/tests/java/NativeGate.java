import ferrofluid.NativeHooks;

/**
 * Runs the Java bodies of the generated {@code NativeHooks.nativeEnter/nativeExit(int)} (their
 * natives unbound: reaching them throws UnsatisfiedLinkError) often enough for the JIT to
 * compile them: while {@code active} is 0 they return in Java, otherwise they call the natives.
 */
public class NativeGate {
    static String call(boolean enter, int id) {
        try {
            if (enter) {
                NativeHooks.nativeEnter(id);
            } else {
                NativeHooks.nativeExit(id);
            }
            return "java";
        } catch (UnsatisfiedLinkError e) {
            return "native";
        }
    }

    public static void main(String[] args) {
        String last = null;
        for (int round = 0; round < 20000; round++) {
            StringBuilder s = new StringBuilder();
            for (int active : new int[] {0, 1, 0}) {
                NativeHooks.active = active;
                s.append(call(true, round)).append(' ').append(call(false, ~round)).append(' ');
            }
            String line = s.toString().trim();
            if (last != null && !last.equals(line)) throw new AssertionError(last + " / " + line);
            last = line;
        }
        System.out.println(last);
    }
}
