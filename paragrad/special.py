"""pg.special (being written)"""
