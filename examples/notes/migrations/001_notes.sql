CREATE TABLE notes (
    id   bigserial PRIMARY KEY,
    body text NOT NULL
);
