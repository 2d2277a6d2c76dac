/** Calls on the way to a throw and at the head of exception handlers (cold sites), of every dispatch. */
public class ColdSites {
    static int fails;
    static long noted;

    static String describe(int i) { return "bad " + i; }

    static int check(int i) {
        if (i % 3 == 0) throw new IllegalStateException(describe(i));   // static + special, cold
        return i;
    }

    static void note(String m, int h, long a, double b, String c) { noted += m.length() + h % 3 + a + (long) b + c.length(); }

    static int guarded(int i, Object o) {
        try {
            return check(i);                                              // hot
        } catch (IllegalStateException e) {
            note(e.getMessage(), o.hashCode(), 1L, 2.0, "x");             // handler head: virtual x2, static
            fails++;
            return -1;
        }
    }

    public static void main(String[] args) {
        int sum = 0;
        for (int i = 0; i < 10; i++) sum += guarded(i, i % 2 == 0 ? (Object) "s" : (Object) Integer.valueOf(i));
        System.out.println("cold " + sum + " " + fails + " " + noted);
    }
}
