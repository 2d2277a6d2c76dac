/**
 * A call of Object.toString, which class-hierarchy analysis says may reach hundreds of
 * methods: only the receivers that really reach it (P, Q, String) should be instrumented,
 * not R, loaded but never a receiver.
 */
public class Receivers {
    public static void main(String[] args) {
        Object[] xs = { new P(), new Q(), "s" };
        int n = 0;
        for (int i = 0; i < 4; i++) {
            for (Object x : xs) {
                n += describe(x);
            }
        }
        Class<?> unused = R.class;
        System.out.println(n + " " + unused.getName());
    }

    static int describe(Object o) {
        return o.toString().length();
    }
}

class P {
    public String toString() {
        return "P";
    }
}

class Q {
    public String toString() {
        return helper();
    }

    static String helper() {
        return "Q";
    }
}

class R {
    public String toString() {
        return "R";
    }
}
