from rocketq.cli.main import run

run()
