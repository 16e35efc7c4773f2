from freshline.interfaces.cli import main

main()
