package suite;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;

/** H2 (in-memory SQL database): inserts, indexes, joins, aggregates and updates. */
public final class H2 {
    public static void main(String[] args) throws Exception {
        int scale = Sum.scale(args, 20);
        Sum sum = new Sum();
        try (Connection c = DriverManager.getConnection("jdbc:h2:mem:suite", "sa", "")) {
            Statement s = c.createStatement();
            s.execute("CREATE TABLE customer(id INT PRIMARY KEY, name VARCHAR(40), region INT)");
            s.execute("CREATE TABLE orders(id INT PRIMARY KEY, customer INT, item VARCHAR(40), qty INT, price DECIMAL(12,2))");
            s.execute("CREATE INDEX orders_customer ON orders(customer)");
            Sum.Rng rng = new Sum.Rng(42);
            // Scale 0 is the CI smoke size: a small database, one round.
            int customers = scale == 0 ? 100 : 2000;
            try (PreparedStatement p = c.prepareStatement("INSERT INTO customer VALUES (?, ?, ?)")) {
                for (int i = 0; i < customers; i++) {
                    p.setInt(1, i);
                    p.setString(2, Sum.words(rng, 2));
                    p.setInt(3, rng.next(20));
                    p.addBatch();
                }
                p.executeBatch();
            }
            try (PreparedStatement p = c.prepareStatement("INSERT INTO orders VALUES (?, ?, ?, ?, ?)")) {
                for (int i = 0; i < customers * 5; i++) {
                    p.setInt(1, i);
                    p.setInt(2, rng.next(customers));
                    p.setString(3, Sum.words(rng, 1));
                    p.setInt(4, 1 + rng.next(9));
                    p.setBigDecimal(5, java.math.BigDecimal.valueOf(rng.next(100000), 2));
                    p.addBatch();
                    if (i % 1000 == 999) {
                        p.executeBatch();
                    }
                }
                p.executeBatch();
            }
            String[] queries = {
                "SELECT c.region, COUNT(*), SUM(o.qty * o.price) FROM customer c JOIN orders o ON o.customer = c.id"
                        + " GROUP BY c.region ORDER BY c.region",
                "SELECT item, AVG(price), MAX(qty) FROM orders GROUP BY item ORDER BY item",
                "SELECT c.name, SUM(o.qty) AS q FROM customer c JOIN orders o ON o.customer = c.id"
                        + " GROUP BY c.id, c.name ORDER BY q DESC, c.id LIMIT 100",
                "SELECT item, COUNT(DISTINCT customer), MIN(price) FROM orders WHERE qty > 3 GROUP BY item ORDER BY item",
                "SELECT region, name FROM customer WHERE name LIKE '%ta%' ORDER BY id LIMIT 500",
            };
            for (int round = 0; round < Math.max(scale, 1); round++) {
                for (String q : queries) {
                    try (ResultSet r = s.executeQuery(q)) {
                        dump(r, sum);
                    }
                }
                try (PreparedStatement p = c.prepareStatement("SELECT SUM(qty * price) FROM orders WHERE customer = ?")) {
                    for (int i = 0; i < (scale == 0 ? 100 : 2000); i++) {
                        p.setInt(1, rng.next(customers));
                        try (ResultSet r = p.executeQuery()) {
                            dump(r, sum);
                        }
                    }
                }
                sum.add(s.executeUpdate("UPDATE orders SET qty = qty + 1 WHERE MOD(id, 7) = " + (round % 7)));
            }
        }
        sum.print("h2");
    }

    static void dump(ResultSet r, Sum sum) throws Exception {
        ResultSetMetaData m = r.getMetaData();
        StringBuilder sb = new StringBuilder();
        while (r.next()) {
            for (int i = 1; i <= m.getColumnCount(); i++) {
                sb.append(r.getString(i)).append('|');
            }
            sb.append('\n');
        }
        sum.add(sb.toString());
    }
}
