package world

// openNonBlock is nothing on Windows, whose named pipes are not files of
// a folder.
const openNonBlock = 0
