from freshline.interfaces.mcp.stdio import main

main()
