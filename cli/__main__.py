from kgnorm.cli.app import main

main()
