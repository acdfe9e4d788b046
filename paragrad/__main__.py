from .cli import main

if __name__ == "__main__":      # (`python -m paragrad`; importing this module runs nothing)
    raise SystemExit(main())
