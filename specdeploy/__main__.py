from specdeploy.cli import main

main()
