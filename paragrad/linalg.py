"""pg.linalg (being written)"""
