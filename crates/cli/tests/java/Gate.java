/** The program `ferrofluid diff` gates on: root() calls step() three times and check() once. */
public class Gate {
    static int sum;

    static void step(int i) {
        sum += i;
    }

    static void check() {
        sum ^= 1;
    }

    static void root() {
        for (int i = 0; i < 3; i++) {
            step(i);
        }
        check();
    }

    public static void main(String[] args) {
        root();
        System.out.println(sum);
    }
}
