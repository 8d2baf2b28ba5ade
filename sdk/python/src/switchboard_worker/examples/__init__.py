"""Runnable example workers (``python -m switchboard_worker.examples.echo``)."""
