"""Test and benchmark tools shipped with the package because example configs run them (the instant
bot); nothing in the product imports them."""
