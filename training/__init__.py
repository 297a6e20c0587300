"""What rebuilds the files the product ships in core/data/ (and the story models' weights in core/): each module
runs from the repository root as `python -m training.<name>`; README.md maps every file to its command and the
test that checks it is current. Not part of the installed program."""
