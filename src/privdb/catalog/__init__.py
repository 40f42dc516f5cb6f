"""What privdb knows about a database: its tables' privacy metadata, analysts, and stored answers."""
