// The JP paper's Fig. 4: f loops 10 times calling h() and g(i); g(i) calls h() i times.
public class Fig4 {
    static long sink;

    static void f() {
        for (int i = 1; i <= 10; i++) {
            h();
            g(i);
        }
    }

    static void g(int n) {
        for (int i = 0; i < n; i++) {
            h();
        }
    }

    static void h() {
        sink = sink * 31 + 7;
    }
}
