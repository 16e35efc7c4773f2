"""freshline.interfaces."""
