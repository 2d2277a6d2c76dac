import ferrofluid.Hooks;

/**
 * Runs the Java body of the generated {@code Hooks.site(int)} (natives unbound: reaching the
 * native {@code receiver} throws UnsatisfiedLinkError), often enough for the JIT to compile it.
 */
public class SiteHook {
    static String call(int site) {
        try {
            Hooks.site(site);
            return "java";
        } catch (UnsatisfiedLinkError e) {
            return "native";
        }
    }

    public static void main(String[] args) {
        String first = null;
        for (int round = 0; round < 3000; round++) {
            Hooks.active = 0;
            Hooks.fired = null;
            String s = call(5);
            Hooks.active = 1;
            s += " " + call(5);
            Hooks.fired = new byte[10];
            Hooks.fired[5] = 1;
            s += " " + call(5) + " " + call(6) + " " + call(10) + " " + call(Integer.MAX_VALUE);
            for (int i = 0; i < 20; i++) {
                if (!call(5).equals("java")) throw new AssertionError("fired site took the native path");
            }
            Hooks.active = 0;
            s += " " + call(6);
            if (first == null) first = s;
            else if (!s.equals(first)) throw new AssertionError(s + " after " + first);
        }
        System.out.println(first);
    }
}
