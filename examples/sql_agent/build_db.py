"""Build the SQL agent's database and task set: ``python build_db.py [--out .]`` writes ``shop.db`` (a
small SQLite shop: customers, products, orders; the same rows on every run) and ``tasks.json`` (questions
made from templates over its rows, each with its gold SQL and the answer that SQL gives; the tasks about
every fourth entity are held out, so held-out questions ask about rows no training question named)."""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
from pathlib import Path

CITIES = ["Lyon", "Porto", "Ghent", "Turin", "Leeds", "Graz"]
FIRST = ["Ana", "Ben", "Carla", "Dev", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jade", "Kai", "Lena",
         "Milo", "Nora", "Omar", "Pia"]  # fmt: skip
PRODUCTS = [("kettle", "kitchen", 39), ("toaster", "kitchen", 29), ("blender", "kitchen", 59),
            ("lamp", "home", 24), ("rug", "home", 89), ("mirror", "home", 45), ("drill", "tools", 79),
            ("hammer", "tools", 15), ("saw", "tools", 22), ("tent", "outdoor", 129), ("lantern", "outdoor", 19),
            ("backpack", "outdoor", 49)]  # fmt: skip
SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price INTEGER NOT NULL);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),
                     product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL);
"""
TEMPLATES = {
    "customer": [
        ("Which city does {x} live in?", "SELECT city FROM customers WHERE name = '{x}'"),
        ("How many orders did {x} place?",
         "SELECT COUNT(*) FROM orders JOIN customers ON customers.id = orders.customer_id WHERE customers.name = '{x}'"),
    ],
    "product": [
        ("What is the price of the {x}?", "SELECT price FROM products WHERE name = '{x}'"),
        ("Which category is the {x} in?", "SELECT category FROM products WHERE name = '{x}'"),
        ("How many {x} items were ordered in total?",
         "SELECT SUM(quantity) FROM orders JOIN products ON products.id = orders.product_id WHERE products.name = '{x}'"),
    ],
    "city": [("How many customers live in {x}?", "SELECT COUNT(*) FROM customers WHERE city = '{x}'")],
}  # fmt: skip


def build(out: Path) -> tuple[Path, Path]:
    rng = random.Random(0)
    db = out / "shop.db"
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO customers VALUES (?, ?, ?)",
                    [(i + 1, name, rng.choice(CITIES)) for i, name in enumerate(FIRST)])  # fmt: skip
    con.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", [(i + 1, *p) for i, p in enumerate(PRODUCTS)])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)",
                    [(i + 1, rng.randint(1, len(FIRST)), rng.randint(1, len(PRODUCTS)), rng.randint(1, 4))
                     for i in range(80)])  # fmt: skip
    con.commit()
    entities = {"customer": FIRST, "product": [p[0] for p in PRODUCTS], "city": CITIES}
    tasks = []
    for kind, names in entities.items():
        for position, name in enumerate(names):
            for template, sql in TEMPLATES[kind]:
                query = sql.format(x=name)
                answer = con.execute(query).fetchone()[0]
                tasks.append({
                    "id": f"{kind}-{name}-{len(tasks)}", "question": template.format(x=name), "sql": query,
                    "answer": 0 if answer is None else answer, "split": "heldout" if position % 4 == 3 else "train",
                })  # fmt: skip
    con.close()
    task_file = out / "tasks.json"
    task_file.write_text(json.dumps(tasks, indent=1))
    return db, task_file


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    db, task_file = build(parser.parse_args().out)
    tasks = json.loads(task_file.read_text())
    held = sum(t["split"] == "heldout" for t in tasks)
    print(
        f"{db}: 16 customers, 12 products, 80 orders; {task_file}: {len(tasks) - held} train, {held} held-out tasks"
    )
