from forgemem.cli.entry import run

if __name__ == "__main__":  # never when a worker process re-imports this module
    run()
