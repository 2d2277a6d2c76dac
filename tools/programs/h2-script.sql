CREATE TABLE item(id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2));
INSERT INTO item VALUES (1, 'nut', 0.10), (2, 'bolt', 2.50), (3, 'gear', 12.00);
CREATE INDEX idx_name ON item(name);
SELECT name, price * 3 AS p3 FROM item WHERE price > 0.5 ORDER BY name;
SELECT COUNT(*), SUM(price), MAX(name) FROM item;
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT SUM(n) FROM r;
UPDATE item SET price = price * 2 WHERE id = 2;
SELECT id, name, price FROM item ORDER BY id;
