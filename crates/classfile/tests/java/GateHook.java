import ferrofluid.Hooks;

/**
 * Runs the Java bodies of the generated {@code Hooks.enter/exit/unwind(int)} (natives unbound:
 * reaching {@code enter0}/{@code exit0} throws UnsatisfiedLinkError), often enough for the JIT to
 * compile them: outside every root ({@code active == 0}) a method's probe returns in Java unless
 * its id is negative (a root or a region, passed as {@code ~id}); inside one, unless the
 * method's probes were dropped ({@code dropped[id]}: 1 for enter, 2 for every probe).
 */
public class GateHook {
    static String call(int hook, int id) {
        try {
            switch (hook) {
                case 0: Hooks.enter(id); break;
                case 1: Hooks.exit(id); break;
                default: Hooks.unwind(id); break;
            }
            return "java";
        } catch (UnsatisfiedLinkError e) {
            return "native";
        }
    }

    public static void main(String[] args) {
        String first = null;
        for (int round = 0; round < 3000; round++) {
            StringBuilder s = new StringBuilder();
            for (int hook = 0; hook < 3; hook++) {
                Hooks.active = 0;
                s.append(hook == 0 ? "" : " | ");
                String sep = "";
                for (int id : new int[] {5, ~5, 0, Integer.MAX_VALUE, Integer.MIN_VALUE}) {
                    s.append(sep).append(call(hook, id));
                    sep = " ";
                }
                for (int i = 0; i < 20; i++) {
                    if (!call(hook, 7).equals("java")) throw new AssertionError("outside a root, native path");
                }
                Hooks.active = 1;
                s.append(' ').append(call(hook, 5)).append(' ').append(call(hook, ~5));
                // Inside a root: dropped[id] 1 ends enter in Java, 2 every probe; a root's ~id,
                // an id beyond the array and a null array reach the agent.
                Hooks.dropped = new byte[8];
                Hooks.dropped[5] = 1;
                Hooks.dropped[6] = 2;
                s.append(" /");
                for (int id : new int[] {5, 6, 4, ~5, 8}) {
                    s.append(' ').append(call(hook, id));
                }
                Hooks.dropped = null;
                s.append(' ').append(call(hook, 6));
            }
            Hooks.active = 0;
            if (first == null) first = s.toString();
            else if (!s.toString().equals(first)) throw new AssertionError(s + " after " + first);
        }
        System.out.println(first);
    }
}
