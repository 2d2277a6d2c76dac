/** An interface with three implementations; C is loaded only when main asks for it by name. */
public class Shapes {
    public static void main(String[] args) throws Exception {
        drive(new A());
        drive(new B());
        Task c = (Task) Class.forName("C").getDeclaredConstructor().newInstance();
        drive(c);
    }

    static void drive(Task t) {
        t.run();
    }
}

interface Task {
    void run();
}

class A implements Task {
    public void run() {}
}

class B implements Task {
    public void run() {
        helper();
    }

    static void helper() {}
}

class C implements Task {
    public void run() {}
}
