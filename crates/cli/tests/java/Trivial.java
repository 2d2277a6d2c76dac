// JP's Fig. 4 with a getter: `h` and `getX` are trivial, `f` and `g` loop.
public class Trivial {
    int x;

    int getX() { return x; }

    void h() {}

    void g(int i) { for (int j = 0; j < i; j++) h(); }

    int f() {
        int s = 0;
        for (int i = 0; i < 10; i++) {
            h();
            g(i);
            s += getX();
        }
        return s;
    }

    public static void main(String[] args) {
        Trivial t = new Trivial();
        t.x = 1;
        System.out.println(t.f());
    }
}
