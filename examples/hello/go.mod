module hello

go 1.22
