// Trivial methods called from a loop: a getter, a static helper and an array read that throws
// past the end (4 elements, indexes 0-5).
public class Leaves {
    int x;
    int[] a = new int[4];

    int getX() { return x; }

    static int twice(int v) { return v * 2; }

    int at(int i) { return a[i]; }

    int work(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += getX() + twice(i);
            try {
                s += at(i);
            } catch (ArrayIndexOutOfBoundsException e) {
                s++;
            }
        }
        return s;
    }

    public static void main(String[] args) {
        Leaves l = new Leaves();
        l.x = 1;
        int s = 0;
        for (int k = 0; k < 3; k++) {
            s += l.work(6);
        }
        System.out.println(s);
    }
}
