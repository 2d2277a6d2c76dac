// Every way to switch: tableswitch, lookupswitch, strings, enums, and (Java 21+)
// pattern and record-pattern switches that compile to invokedynamic typeSwitch.
public class Switches {
    enum Color { RED, GREEN, BLUE }

    sealed interface Shape permits Circle, Square {}
    record Circle(double r) implements Shape {}
    record Square(double side) implements Shape {}

    static int table(int x) {
        switch (x) {
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            case 3: return 13;
            case 5: return 15;
            default: return -1;
        }
    }

    static int lookup(int x) {
        return switch (x) {
            case -1000000 -> 1;
            case 7 -> 2;
            case 123456 -> 3;
            default -> 0;
        };
    }

    static int strings(String s) {
        return switch (s) {
            case "alpha" -> 1;
            case "beta", "gamma" -> 2;
            default -> 3;
        };
    }

    static int colors(Color c) {
        return switch (c) {
            case RED -> 1;
            case GREEN -> 2;
            case BLUE -> 3;
        };
    }

    static double area(Shape s) {
        return switch (s) {
            case Circle(double r) when r > 10 -> -1;
            case Circle c -> Math.PI * c.r() * c.r();
            case Square(double side) -> side * side;
        };
    }

    static String describe(Object o) {
        return switch (o) {
            case null -> "null";
            case Integer i when i > 0 -> "positive";
            case Integer i -> "int " + i;
            case String s -> "string " + s.length();
            default -> "other";
        };
    }
}
