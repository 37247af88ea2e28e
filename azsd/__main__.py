from azsd.cli import main

main()
