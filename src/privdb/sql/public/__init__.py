"""Plain SELECTs over public tables: the closed language they are checked against, and their exact,
free answers."""
