public class Fig4 {
    public static void main(String[] args) { new Fig4().f(); }
    void f() { for (int i = 0; i < 10; i++) { h(); g(i); } }
    void g(int i) { for (int j = 0; j < i; j++) h(); }
    void h() {}
}
