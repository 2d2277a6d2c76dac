import java.util.ArrayList;
import java.util.List;

/** Virtual and interface calls with 0 to 6 argument slots, some on branch targets. */
public class Receivers {
    interface Shape {
        int area(int scale);
        default int mix(long a, double b, String c, int d) { return (int) (a + b) + c.length() + d + area(1); }
    }
    static final class Square implements Shape { public int area(int s) { return 4 * s; } }
    static final class Tri implements Shape { public int area(int s) { return 3 * s; } }

    static int calls(Object[] things, Shape[] shapes) {
        int h = 0;
        for (Object x : things) h += x.hashCode() % 7;           // 0 slots, 3 classes
        for (int i = 0; i < shapes.length; i++)                    // interface, 1 slot
            h += i % 2 == 0 ? shapes[i].area(i) : -shapes[i].area(1);
        for (Shape s : shapes) h += s.mix(3L, 0.5, "xy", h % 5);   // interface, 6 slots: spilled
        StringBuilder sb = new StringBuilder();
        sb.append(new char[] { 'p', 'q', 'r' }, 1, 2);            // 3 slots: spilled
        sb.append(12L).append('c').append(2.5);                   // 2 slots, 1 slot, 2 slots
        List<Integer> l = new ArrayList<>();
        l.add(5);                                                  // interface, 1 slot
        l.add(0, 7);                                               // interface, 2 slots
        l.set(0, l.get(1));                                        // interface, 2 slots + 1 slot
        Object nothing = null;
        try { nothing.toString(); } catch (NullPointerException e) { h++; }  // null receiver
        return h + sb.length() + l.size() + l.get(0);
    }

    public static void main(String[] args) {
        Object[] things = { "a", Integer.valueOf(1), Long.valueOf(2) };
        Shape[] shapes = { new Square(), new Tri(), new Square() };
        int total = 0;
        for (int i = 0; i < 5; i++) total += calls(things, shapes);
        System.out.println("receivers " + total);
    }
}
