from memkit.cli import main

main()
