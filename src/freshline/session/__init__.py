"""freshline.session."""
