import{a as e,b as r}from"./chunk-LZZQ4ZQP.js";import"./chunk-TZKC56AF.js";import"./chunk-PHKIAKHS.js";export{e as TreeViewModule,r as createTreeViewServices};
